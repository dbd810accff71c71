// Triggers for the local runtime: the dispatcher that runs DATABASE, AUTHENTICATION and SCHEDULED triggers,
// and the CRON schedules of the last.
export {
  createTriggerDispatcher,
  type AuthOperationType, type AuthTriggerEvent, type TriggerDispatcher, type TriggerDispatcherOptions,
} from './dispatcher';
export { CronSyntaxError, parseCron, type CronSchedule } from './cron';
