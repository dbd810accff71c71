import RealmSwift
import SwiftUI

struct ItemsView: View {
    let user: User
    @ObservedResults(Item.self, sortDescriptor: SortDescriptor(keyPath: "_id")) var items
    @State private var summary = ""

    var body: some View {
        NavigationStack {
            List {
                HStack {
                    TextField("New to-do", text: $summary)
                    Button("Add") {
                        let text = summary.trimmingCharacters(in: .whitespaces)
                        guard !text.isEmpty else { return }
                        $items.append(Item(value: ["summary": text, "owner_id": user.id]))
                        summary = ""
                    }
                }
                ForEach(items) { item in
                    HStack {
                        Button(item.isComplete ? "☑" : "☐") {
                            guard let thawed = item.thaw(), let realm = thawed.realm else { return }
                            try? realm.write { thawed.isComplete.toggle() }
                        }
                        Text(item.summary)
                    }
                }
                .onDelete(perform: $items.remove)
            }
            .navigationTitle("My to-dos")
            .toolbar { Button("Log out") { Task { try? await user.logOut() } } }
        }
    }
}
