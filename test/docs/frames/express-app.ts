// The frame of docs/http.md's first Express fragment: an Express app and a route handler of yours.
import express from 'express';
import type { Request, Response } from 'express';

const app = express();
declare function login(req: Request, res: Response): void;
