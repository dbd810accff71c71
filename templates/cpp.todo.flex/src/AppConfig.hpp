#pragma once
#include <string>

// What atlasConfig.json holds. Every key is required: a missing one stops the program with its name.
struct AppConfig {
    std::string appId;
    std::string baseUrl;
    std::string appUrl;
    std::string clientApiBaseUrl;
    std::string dataApiBaseUrl;
    std::string dataExplorerLink;
    std::string dataSourceName;
};

AppConfig readAppConfig(const std::string& path);
