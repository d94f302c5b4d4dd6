// Express 4, installed as the alias `express4` to test the adapter on both majors; typed as Express.
declare module 'express4' {
  import express from 'express';
  export default express;
}
