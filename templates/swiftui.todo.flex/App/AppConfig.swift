import Foundation

/// The contents of atlasConfig.plist: appId and baseUrl are required, dataExplorerLink is optional.
struct AppConfig {
    var appId: String
    var baseUrl: String
    var dataExplorerLink: String?
}

func loadAppConfig() -> AppConfig {
    guard let path = Bundle.main.path(forResource: "atlasConfig", ofType: "plist"),
          let values = NSDictionary(contentsOfFile: path) as? [String: Any] else {
        fatalError("atlasConfig.plist is missing from the app bundle")
    }
    guard let appId = values["appId"] as? String, !appId.isEmpty else {
        fatalError("atlasConfig.plist has no appId: put your app id there (see README.md)")
    }
    guard let baseUrl = values["baseUrl"] as? String else { fatalError("atlasConfig.plist has no baseUrl") }
    return AppConfig(appId: appId, baseUrl: baseUrl, dataExplorerLink: values["dataExplorerLink"] as? String)
}
