#include "TodoCli.hpp"
#include "Item.hpp"

#include <iostream>
#include <string>

namespace {
void printItems(realm::results<Item>& items) {
    std::size_t index = 0;
    for (auto& item : items) {
        std::cout << index++ << ". [" << (item.isComplete ? "x" : " ") << "] " << std::string(item.summary) << "\n";
    }
    if (index == 0) std::cout << "(no items)\n";
}

std::size_t readIndex(std::size_t size) {
    std::string line;
    std::getline(std::cin, line);
    const auto index = static_cast<std::size_t>(std::stoul(line));
    if (index >= size) throw std::out_of_range("no item " + line);
    return index;
}
}

void runTodoCli(realm::db& database, const std::string& userId) {
    auto items = database.objects<Item>();
    for (;;) {
        std::cout << "\nYour items:\n";
        printItems(items);
        std::cout << "[a]dd, [t]oggle, [d]elete, [q]uit: ";
        std::string choice;
        if (!std::getline(std::cin, choice) || choice == "q") return;
        try {
            if (choice == "a") {
                std::cout << "Summary: ";
                Item item;
                std::getline(std::cin, item.summary);
                item.owner_id = userId;
                database.write([&] { database.add(std::move(item)); });
            } else if (choice == "t") {
                std::cout << "Item number: ";
                auto item = items[readIndex(items.size())];
                database.write([&] { item.isComplete = !item.isComplete; });
            } else if (choice == "d") {
                std::cout << "Item number: ";
                auto item = items[readIndex(items.size())];
                database.write([&] { database.remove(item); });
            }
        } catch (const std::exception& e) {
            std::cout << "Not done: " << e.what() << "\n";
        }
    }
}
