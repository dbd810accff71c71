package com.example.kotlintodo

import android.os.Bundle
import androidx.activity.ComponentActivity
import androidx.activity.compose.setContent
import androidx.compose.foundation.layout.*
import androidx.compose.foundation.lazy.LazyColumn
import androidx.compose.foundation.lazy.items
import androidx.compose.material3.*
import androidx.compose.runtime.*
import androidx.compose.ui.Alignment
import androidx.compose.ui.Modifier
import androidx.compose.ui.text.input.PasswordVisualTransformation
import androidx.compose.ui.unit.dp
import io.realm.kotlin.mongodb.Credentials
import kotlinx.coroutines.launch

class MainActivity : ComponentActivity() {
    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        setContent { MaterialTheme { TodoScreen() } }
    }
}

@Composable
fun TodoScreen() {
    var repository by remember { mutableStateOf(app.currentUser?.let { TodoRepository(it) }) }
    val current = repository
    if (current == null) LoginForm(onLoggedIn = { repository = TodoRepository(it) })
    else ItemList(current, onLogOut = { current.close(); repository = null })
}

@Composable
fun LoginForm(onLoggedIn: (io.realm.kotlin.mongodb.User) -> Unit) {
    var email by remember { mutableStateOf("") }
    var password by remember { mutableStateOf("") }
    var error by remember { mutableStateOf<String?>(null) }
    val scope = rememberCoroutineScope()
    fun run(register: Boolean) = scope.launch {
        try {
            if (register) app.emailPasswordAuth.registerUser(email, password)
            onLoggedIn(app.login(Credentials.emailPassword(email, password)))
        } catch (e: Exception) {
            error = e.message
        }
    }
    Column(Modifier.padding(16.dp), verticalArrangement = Arrangement.spacedBy(8.dp)) {
        OutlinedTextField(email, { email = it }, label = { Text("Email") })
        OutlinedTextField(password, { password = it }, label = { Text("Password") }, visualTransformation = PasswordVisualTransformation())
        Row(horizontalArrangement = Arrangement.spacedBy(8.dp)) {
            Button(onClick = { run(register = false) }) { Text("Log in") }
            OutlinedButton(onClick = { run(register = true) }) { Text("Register") }
        }
        error?.let { Text(it, color = MaterialTheme.colorScheme.error) }
    }
}

@Composable
fun ItemList(repository: TodoRepository, onLogOut: () -> Unit) {
    val items by repository.items.collectAsState(initial = emptyList())
    var summary by remember { mutableStateOf("") }
    val scope = rememberCoroutineScope()
    Column(Modifier.padding(16.dp)) {
        Row(verticalAlignment = Alignment.CenterVertically) {
            Text("My to-dos", style = MaterialTheme.typography.headlineSmall, modifier = Modifier.weight(1f))
            TextButton(onClick = { scope.launch { app.currentUser?.logOut(); onLogOut() } }) { Text("Log out") }
        }
        Row(verticalAlignment = Alignment.CenterVertically) {
            OutlinedTextField(summary, { summary = it }, label = { Text("New to-do") }, modifier = Modifier.weight(1f))
            Button(onClick = { val s = summary.trim(); if (s.isNotEmpty()) scope.launch { repository.add(s); summary = "" } }) { Text("Add") }
        }
        LazyColumn {
            items(items, key = { it.id.toHexString() }) { item ->
                Row(verticalAlignment = Alignment.CenterVertically) {
                    Checkbox(item.isComplete, { scope.launch { repository.toggle(item) } })
                    Text(item.summary, Modifier.weight(1f))
                    TextButton(onClick = { scope.launch { repository.remove(item) } }) { Text("Delete") }
                }
            }
        }
    }
}
