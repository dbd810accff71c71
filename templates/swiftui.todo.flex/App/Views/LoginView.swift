import RealmSwift
import SwiftUI

struct LoginView: View {
    @State private var email = ""
    @State private var password = ""
    @State private var error: String?

    var body: some View {
        Form {
            TextField("Email", text: $email).textInputAutocapitalization(.never)
            SecureField("Password", text: $password)
            Button("Log in") { Task { await run(register: false) } }
            Button("Register") { Task { await run(register: true) } }
            if let error { Text(error).foregroundColor(.red) }
        }
    }

    @MainActor
    private func run(register: Bool) async {
        do {
            if register { try await app.emailPasswordAuth.registerUser(email: email, password: password) }
            _ = try await app.login(credentials: .emailPassword(email: email, password: password))
        } catch {
            self.error = error.localizedDescription
        }
    }
}
