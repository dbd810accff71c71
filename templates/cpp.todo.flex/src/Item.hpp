#pragma once
#include <cpprealm/sdk.hpp>

// One to-do item, as the backend's todo.Item schema describes it.
struct Item {
    realm::primary_key<realm::object_id> _id{realm::object_id::generate()};
    bool isComplete = false;
    std::string summary;
    std::string owner_id;
};
REALM_SCHEMA(Item, _id, isComplete, summary, owner_id)
