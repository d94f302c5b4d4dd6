export declare const ACCOUNTS: number;
export declare const ADDRESSES: number;
export declare const floodIp: (n: number) => string;
