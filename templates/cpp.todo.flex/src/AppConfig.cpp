#include "AppConfig.hpp"

#include <fstream>
#include <stdexcept>
#include <nlohmann/json.hpp>

namespace {
std::string requiredString(const nlohmann::json& config, const char* key, const std::string& path) {
    if (!config.contains(key) || !config[key].is_string()) {
        throw std::runtime_error(path + ": missing string key \"" + key + "\"");
    }
    return config[key].get<std::string>();
}
}

AppConfig readAppConfig(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error("cannot open " + path);
    const auto config = nlohmann::json::parse(file);
    AppConfig result{
        requiredString(config, "appId", path),
        requiredString(config, "baseUrl", path),
        requiredString(config, "appUrl", path),
        requiredString(config, "clientApiBaseUrl", path),
        requiredString(config, "dataApiBaseUrl", path),
        requiredString(config, "dataExplorerLink", path),
        requiredString(config, "dataSourceName", path),
    };
    if (result.appId.empty()) throw std::runtime_error(path + ": \"appId\" is empty; put your app's id there (see README.md)");
    return result;
}
