import RealmSwift
import SwiftUI

/// The App Services app, configured from atlasConfig.plist.
let theAppConfig = loadAppConfig()
let app = App(id: theAppConfig.appId, configuration: AppConfiguration(baseURL: theAppConfig.baseUrl))

@main
struct SwiftUITodoApp: SwiftUI.App {
    var body: some Scene {
        WindowGroup {
            ContentView(app: app)
        }
    }
}
