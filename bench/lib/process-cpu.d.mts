export declare function processCpuSeconds(pid: number): number;
export declare function treeCpuSeconds(pid: number): number;
