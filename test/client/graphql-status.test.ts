import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { describeGraphqlApp } from '../../client/graphqlStatus';

const two = [{ root: '/w/a', name: 'A' }, { root: '/w/b', name: 'B' }];

describe('GraphQL language status wording', () => {
  test('names the app and why it applies; a pick is offered only when there is a choice', () => {
    const inFolder = describeGraphqlApp({ enabled: true, choices: two, app: { root: '/w/a', name: 'A', reason: 'folder' } });
    assert.deepEqual(inFolder, { text: 'GraphQL: A', detail: 'Schema of A: the file is in its folder', needsAttention: false, canPick: true });
    const only = describeGraphqlApp({ enabled: true, choices: [two[0]], app: { root: '/w/a', name: 'A', reason: 'only' } });
    assert.equal(only.canPick, false);
    assert.match(only.detail, /only app/);
    assert.match(describeGraphqlApp({ enabled: true, choices: two, app: { root: '/w/b', name: 'B', reason: 'setting' } }).detail, /appServicesLocal\.graphql\.app/);
  });

  test('without an app it asks for attention, and offers the pick when apps exist', () => {
    assert.deepEqual(describeGraphqlApp({ enabled: true, choices: two }), { text: 'GraphQL: no app', detail: '2 apps in the workspace: pick the one whose schema applies', needsAttention: true, canPick: true });
    assert.equal(describeGraphqlApp({ enabled: true, choices: [] }).canPick, false);
  });

  test('turned off', () => {
    assert.equal(describeGraphqlApp({ enabled: false, choices: two, app: { root: '/w/a', name: 'A', reason: 'folder' } }).text, 'GraphQL: off');
  });
});
