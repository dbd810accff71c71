// Types of what scripts/package.mjs exports, for the test that checks the .vsix.
export const ROOT: string;
export const MAX_VSIX_BYTES: number;
export const REQUIRED_FILES: string[];
export function vsixFileName(manifest?: { name: string; version: string }): string;
export function readVsix(file: string): { files: string[]; manifest: Record<string, any>; bytes: number; names: string[] };
export function checkVsix(file: string): string[];
export function packageExtension(options?: { out?: string; build?: boolean }): string;
