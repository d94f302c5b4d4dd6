// The frame of docs/http.md's Fastify fragment: a Fastify instance.
import Fastify from 'fastify';

const app = Fastify();
