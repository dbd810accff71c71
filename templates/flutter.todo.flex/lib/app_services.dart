import 'package:flutter/foundation.dart';
import 'package:realm/realm.dart';

import 'schemas.dart';

/// The app, its logged-in user and that user's synced realm.
class AppServices with ChangeNotifier {
  AppServices(String appId, Uri baseUrl, this.dataExplorerLink)
      : app = App(AppConfiguration(appId, baseUrl: baseUrl));

  final App app;
  final String dataExplorerLink;
  Realm? realm;

  User? get currentUser => app.currentUser;

  Future<void> register(String email, String password) async {
    await EmailPasswordAuthProvider(app).registerUser(email, password);
    await logIn(email, password);
  }

  Future<void> logIn(String email, String password) async {
    final user = await app.logIn(Credentials.emailPassword(email, password));
    realm = Realm(Configuration.flexibleSync(user, [Item.schema]));
    realm!.subscriptions.update((subs) {
      subs.add(realm!.query<Item>(r'owner_id == $0', [user.id]), name: 'my_items', update: true);
    });
    notifyListeners();
  }

  void add(String summary) {
    realm!.write(() => realm!.add(Item(ObjectId(), summary, currentUser!.id)));
  }

  void toggle(Item item) => realm!.write(() => item.isComplete = !item.isComplete);

  void remove(Item item) => realm!.write(() => realm!.delete(item));

  Future<void> logOut() async {
    realm?.close();
    realm = null;
    await currentUser?.logOut();
    notifyListeners();
  }
}
