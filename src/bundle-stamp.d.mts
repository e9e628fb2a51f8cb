// Types of bundle-stamp.mjs (plain JavaScript, so that the process entry needs no type stripping).
export declare const STAMP_FILE: string;
export declare const ALWAYS_CHECKED: readonly string[];
export declare function fileStamp(root: string, file: string): [number, number] | null;
export declare function bundleIsFresh(root: string, outDir: string): boolean;
