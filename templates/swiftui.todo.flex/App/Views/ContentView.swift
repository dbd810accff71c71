import RealmSwift
import SwiftUI

struct ContentView: View {
    @ObservedObject var app: RealmSwift.App

    var body: some View {
        if let user = app.currentUser {
            let config = user.flexibleSyncConfiguration(initialSubscriptions: { subs in
                subs.append(QuerySubscription<Item>(name: "my_items") { $0.owner_id == user.id })
            })
            ItemsView(user: user)
                .environment(\.realmConfiguration, config)
        } else {
            LoginView()
        }
    }
}
