import 'package:realm/realm.dart';

part 'schemas.realm.dart';

// The backend's todo.Item. Run `dart run realm generate` to (re)create schemas.realm.dart.
@RealmModel()
class _Item {
  @MapTo('_id')
  @PrimaryKey()
  late ObjectId id;
  bool isComplete = false;
  late String summary;
  @MapTo('owner_id')
  late String ownerId;
}
