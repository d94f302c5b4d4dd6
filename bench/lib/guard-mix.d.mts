export declare const ACCOUNTS: number;
export declare const ADDRESSES: number;
export declare const floodIp: (n: number) => string;
export declare function pairsPerSecond(
  Guard: new (options: { secret: string; clock: () => number; random: () => number }) => object,
  pairs: number,
): Promise<number>;
