// realm-core's test/object-store/sync/app.cpp `[baas]` test cases (none tagged `[flx]`) against the shipped
// runtime: the Admin API the harness creates its apps with, the client API and partition sync.
import { describeRealmCoreSuite } from './fixtures/realm-core-suite';

describeRealmCoreSuite({ title: 'app.cpp', spec: '[baas]~[flx]', files: ['app.cpp'] });
