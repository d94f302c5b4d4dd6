// The frame of a block that talks to a running `sluice serve` (docs/service.md): nothing to add; it is complete but needs the service.
