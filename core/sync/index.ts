// Partition-based sync, the pure parts: configuration forms, partition values and membership, the state machine.
export * from './config';
export * from './partition';
export * from './state';
export * from './migration';
export { partitionFields, type PartitionField } from './fields';
