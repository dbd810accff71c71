import 'dart:convert';

import 'package:flutter/material.dart';
import 'package:flutter/services.dart';
import 'package:provider/provider.dart';
import 'package:realm/realm.dart';

import 'app_services.dart';
import 'screens/items_screen.dart';
import 'screens/login_screen.dart';

void main() async {
  WidgetsFlutterBinding.ensureInitialized();
  final config = json.decode(await rootBundle.loadString('assets/config/atlasConfig.json')) as Map<String, dynamic>;
  final appId = config['appId'] as String;
  if (appId.isEmpty) {
    throw StateError('assets/config/atlasConfig.json has no appId: put your app id there (see README.md)');
  }
  final services = AppServices(appId, Uri.parse(config['baseUrl'] as String), config['dataExplorerLink'] as String);
  runApp(ChangeNotifierProvider.value(value: services, child: const TodoApp()));
}

class TodoApp extends StatelessWidget {
  const TodoApp({super.key});

  @override
  Widget build(BuildContext context) {
    final services = context.watch<AppServices>();
    return MaterialApp(
      title: 'Realm Flutter Todo',
      theme: ThemeData(colorSchemeSeed: Colors.green, useMaterial3: true),
      home: services.currentUser == null ? const LoginScreen() : const ItemsScreen(),
    );
  }
}
