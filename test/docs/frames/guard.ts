// The frame of docs/guard.md's fragments: the Guard built at the top of the page, and the application's
// own account checks, which the guard never sees.
import type { Guard } from '@sluice/guard';

declare const guard: Guard;
declare function accountExists(account: string): Promise<boolean>;
declare function passwordOk(account: string, password: string): Promise<boolean>;
declare function secondFactorOk(account: string, code: string | undefined): Promise<boolean>;
declare function inBreachCorpus(account: string, password: string): Promise<boolean>;
