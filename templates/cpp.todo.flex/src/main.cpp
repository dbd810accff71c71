#include "AppConfig.hpp"
#include "Item.hpp"
#include "TodoCli.hpp"

#include <iostream>

int main() {
    try {
        const AppConfig config = readAppConfig("atlasConfig.json");
        auto app = realm::App(realm::App::configuration{config.appId, config.baseUrl});

        std::string email, password;
        std::cout << "Email: ";
        std::getline(std::cin, email);
        std::cout << "Password: ";
        std::getline(std::cin, password);
        std::cout << "[l]og in or [r]egister? ";
        std::string mode;
        std::getline(std::cin, mode);
        if (mode == "r") app.register_user(email, password).get();
        auto user = app.login(realm::App::credentials::username_password(email, password)).get();

        auto database = realm::db(user.flexible_sync_configuration());
        const auto userId = user.identifier();
        database.subscriptions().update([&](realm::mutable_sync_subscription_set& subs) {
            subs.add<Item>("my_items", [&](auto& item) { return item.owner_id == userId; });
        }).get();
        database.refresh();

        runTodoCli(database, userId);
        user.log_out().get();
    } catch (const std::exception& e) {
        std::cerr << "Error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
