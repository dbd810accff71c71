#pragma once
#include <cpprealm/sdk.hpp>

// The terminal loop: list, add, toggle and delete the signed-in user's items.
void runTodoCli(realm::db& database, const std::string& userId);
