// Login and the to-do items through the Web SDK: every read and write goes through the app's rules
// (role "owner": a user sees and changes only the items whose owner_id is their user id).
import * as Realm from 'realm-web';

export function createTodoStore(config) {
  const app = new Realm.App({ id: config.appId, baseUrl: config.baseUrl });
  const items = () => app.currentUser.mongoClient(config.dataSourceName).db('todo').collection('Item');
  return {
    get user() { return app.currentUser; },
    async register(email, password) {
      await app.emailPasswordAuth.registerUser({ email, password });
      return app.logIn(Realm.Credentials.emailPassword(email, password));
    },
    logIn: (email, password) => app.logIn(Realm.Credentials.emailPassword(email, password)),
    logOut: () => app.currentUser?.logOut(),
    list: () => items().find({}, { sort: { _id: 1 } }),
    add: (summary) => items().insertOne({ summary, isComplete: false, owner_id: app.currentUser.id }),
    setComplete: (item, isComplete) => items().updateOne({ _id: item._id }, { $set: { isComplete } }),
    remove: (item) => items().deleteOne({ _id: item._id }),
  };
}
