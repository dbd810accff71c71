// The sync wire codec's public surface (see README.md).
export * from './errors';
export * from './instructions';
export * from './changeset';
export * from './messages';
export * from './negotiate';
