import React from 'react';
import { Text } from 'react-native';
import { AppProvider, RealmProvider, UserProvider } from '@realm/react';
import { OpenRealmBehaviorType } from 'realm';
import atlasConfig from '../atlasConfig.json';
import type { AtlasConfig } from './atlasConfig';
import { Item } from './ItemSchema';
import { ItemListView } from './ItemListView';
import { LoginScreen } from './LoginScreen';

const { appId, baseUrl }: AtlasConfig = atlasConfig;

export function AppWrapper() {
  if (!appId) return <Text>atlasConfig.json has no appId: put your app id there (see README.md)</Text>;
  return (
    <AppProvider id={appId} baseUrl={baseUrl}>
      <UserProvider fallback={LoginScreen}>
        <RealmProvider
          schema={[Item]}
          sync={{
            flexible: true,
            existingRealmFileBehavior: { type: OpenRealmBehaviorType.OpenImmediately },
            newRealmFileBehavior: { type: OpenRealmBehaviorType.OpenImmediately },
          }}>
          <ItemListView />
        </RealmProvider>
      </UserProvider>
    </AppProvider>
  );
}
