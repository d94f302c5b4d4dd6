#!/usr/bin/env node
// Build step: tsc compiles the TypeScript; the Redis store's Lua scripts are read at run time from beside
// the compiled module, so copy them into dist/ as they are.
import { cpSync } from 'node:fs';

cpSync('src/stores/redis/scripts', 'dist/stores/redis/scripts', { recursive: true });
cpSync('src/guard/redis/guard.lua', 'dist/guard/redis/guard.lua');
