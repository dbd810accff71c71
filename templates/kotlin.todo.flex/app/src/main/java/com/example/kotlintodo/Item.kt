package com.example.kotlintodo

import io.realm.kotlin.types.RealmObject
import io.realm.kotlin.types.annotations.PersistedName
import io.realm.kotlin.types.annotations.PrimaryKey
import org.mongodb.kbson.ObjectId

/** The backend's todo.Item. */
class Item : RealmObject {
    @PrimaryKey
    @PersistedName("_id")
    var id: ObjectId = ObjectId()
    var isComplete: Boolean = false
    var summary: String = ""
    @PersistedName("owner_id")
    var ownerId: String = ""
}
