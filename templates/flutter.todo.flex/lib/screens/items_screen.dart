import 'package:flutter/material.dart';
import 'package:provider/provider.dart';
import 'package:realm/realm.dart';

import '../app_services.dart';
import '../schemas.dart';

class ItemsScreen extends StatelessWidget {
  const ItemsScreen({super.key});

  @override
  Widget build(BuildContext context) {
    final services = context.read<AppServices>();
    final items = services.realm!.all<Item>();
    return Scaffold(
      appBar: AppBar(title: const Text('My to-dos'), actions: [
        IconButton(icon: const Icon(Icons.logout), onPressed: services.logOut),
      ]),
      body: StreamBuilder<RealmResultsChanges<Item>>(
        stream: items.changes,
        builder: (context, _) => ListView(children: [
          for (final item in items)
            ListTile(
              leading: Checkbox(value: item.isComplete, onChanged: (_) => services.toggle(item)),
              title: Text(item.summary),
              trailing: IconButton(icon: const Icon(Icons.delete), onPressed: () => services.remove(item)),
            ),
        ]),
      ),
      floatingActionButton: FloatingActionButton(
        child: const Icon(Icons.add),
        onPressed: () async {
          final controller = TextEditingController();
          final summary = await showDialog<String>(
            context: context,
            builder: (context) => AlertDialog(
              title: const Text('New to-do'),
              content: TextField(controller: controller, autofocus: true),
              actions: [TextButton(onPressed: () => Navigator.pop(context, controller.text), child: const Text('Add'))],
            ),
          );
          if (summary != null && summary.trim().isNotEmpty) services.add(summary.trim());
        },
      ),
    );
  }
}
