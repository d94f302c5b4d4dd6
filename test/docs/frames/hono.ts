// The frame of docs/http.md's Hono fragment: a Hono app.
import { Hono } from 'hono';

const app = new Hono();
