import React, { useEffect, useState } from 'react';
import { Button, FlatList, Switch, Text, TextInput, View } from 'react-native';
import { useQuery, useRealm, useUser } from '@realm/react';
import { Item } from './ItemSchema';

export function ItemListView() {
  const realm = useRealm();
  const user = useUser();
  const items = useQuery(Item).sorted('_id');
  const [summary, setSummary] = useState('');

  useEffect(() => {
    realm.subscriptions.update((subs) => {
      subs.add(realm.objects(Item).filtered('owner_id == $0', user.id), { name: 'my_items' });
    });
  }, [realm, user]);

  const add = () => {
    const text = summary.trim();
    if (!text) return;
    realm.write(() => realm.create(Item, { summary: text, owner_id: user.id }));
    setSummary('');
  };

  return (
    <View style={{ padding: 16, gap: 8, flex: 1 }}>
      <Button title="Log out" onPress={() => user.logOut()} />
      <TextInput placeholder="New to-do" value={summary} onChangeText={setSummary} onSubmitEditing={add} />
      <Button title="Add" onPress={add} />
      <FlatList
        data={items}
        keyExtractor={(item) => item._id.toHexString()}
        renderItem={({ item }) => (
          <View style={{ flexDirection: 'row', alignItems: 'center', gap: 8 }}>
            <Switch value={item.isComplete} onValueChange={() => realm.write(() => { item.isComplete = !item.isComplete; })} />
            <Text style={{ flex: 1 }}>{item.summary}</Text>
            <Button title="Delete" onPress={() => realm.write(() => realm.delete(item))} />
          </View>
        )}
      />
    </View>
  );
}
