package com.example.kotlintodo

import android.app.Application
import io.realm.kotlin.mongodb.App
import io.realm.kotlin.mongodb.AppConfiguration

/** The App Services app, configured from res/values/atlasConfig.xml. */
lateinit var app: App

class TodoApplication : Application() {
    override fun onCreate() {
        super.onCreate()
        val appId = getString(R.string.realm_app_id)
        check(appId.isNotEmpty()) { "res/values/atlasConfig.xml has no realm_app_id: put your app id there (see README.md)" }
        app = App.create(AppConfiguration.Builder(appId).baseUrl(getString(R.string.realm_base_url)).build())
    }
}
