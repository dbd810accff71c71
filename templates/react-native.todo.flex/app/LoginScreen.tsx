import React, { useState } from 'react';
import { Button, Text, TextInput, View } from 'react-native';
import Realm from 'realm';
import { useApp } from '@realm/react';

export function LoginScreen() {
  const app = useApp();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const run = (register: boolean) => async () => {
    setError('');
    try {
      if (register) await app.emailPasswordAuth.registerUser({ email, password });
      await app.logIn(Realm.Credentials.emailPassword(email, password));
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <View style={{ padding: 16, gap: 8 }}>
      <TextInput placeholder="Email" autoCapitalize="none" value={email} onChangeText={setEmail} />
      <TextInput placeholder="Password" secureTextEntry value={password} onChangeText={setPassword} />
      <Button title="Log in" onPress={run(false)} />
      <Button title="Register" onPress={run(true)} />
      {error ? <Text style={{ color: 'red' }}>{error}</Text> : null}
    </View>
  );
}
