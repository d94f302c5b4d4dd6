// The frame of docs/http.md's Express fragments: an Express app, its handlers, and a `req.user` that an
// auth middleware (passport, or your own) sets before the limiter runs, declared as such middleware declares it.
import express from 'express';
import type { Request, Response } from 'express';
import { rateLimit } from 'sluice/express';

declare global {
  namespace Express {
    interface Request {
      user?: { id: string; login: string };
    }
  }
}

const app = express();
const policy = { algorithm: 'gcra', limit: 10, window: '1m' } as const;
declare function login(req: Request, res: Response): void;
declare function tenantOf(authorization: string | undefined): Promise<string>;
declare function planOf(user: Request['user']): Promise<{ perMinute: number | undefined }>;
