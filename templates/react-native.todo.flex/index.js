import { AppRegistry } from 'react-native';
import { AppWrapper } from './app/AppWrapper';
import { name } from './app.json';

AppRegistry.registerComponent(name, () => AppWrapper);
