// Koa 2, installed as the alias `koa2` to test the adapter on both majors; typed as Koa.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
