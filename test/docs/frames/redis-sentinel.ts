// The frame of a block that needs Redis Sentinels running (docs/redis.md#sentinel): nothing to add; it is complete but needs them.
