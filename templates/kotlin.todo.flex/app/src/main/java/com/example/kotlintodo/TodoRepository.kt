package com.example.kotlintodo

import io.realm.kotlin.Realm
import io.realm.kotlin.ext.query
import io.realm.kotlin.mongodb.User
import io.realm.kotlin.mongodb.sync.SyncConfiguration
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.map

/** The logged-in user's synced realm, subscribed to their own items. */
class TodoRepository(private val user: User) {
    private val realm: Realm = Realm.open(
        SyncConfiguration.Builder(user, setOf(Item::class))
            .initialSubscriptions { realm -> add(realm.query<Item>("owner_id == $0", user.id), "my_items") }
            .build()
    )

    val items: Flow<List<Item>> = realm.query<Item>().asFlow().map { it.list }

    suspend fun add(summary: String) = realm.write {
        copyToRealm(Item().apply { this.summary = summary; ownerId = user.id })
    }

    suspend fun toggle(item: Item) = realm.write { findLatest(item)?.let { it.isComplete = !it.isComplete } }

    suspend fun remove(item: Item) = realm.write { findLatest(item)?.let { delete(it) } }

    fun close() = realm.close()
}
