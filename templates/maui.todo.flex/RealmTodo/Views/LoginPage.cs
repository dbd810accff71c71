using RealmTodo.Services;

namespace RealmTodo.Views;

public class LoginPage : ContentPage
{
    public LoginPage()
    {
        Title = "Log in";
        var email = new Entry { Placeholder = "Email", Keyboard = Keyboard.Email };
        var password = new Entry { Placeholder = "Password", IsPassword = true };
        var error = new Label { TextColor = Colors.Red };
        async Task Run(Func<string, string, Task> action)
        {
            try
            {
                await action(email.Text ?? "", password.Text ?? "");
                await Navigation.PushAsync(new ItemsPage());
            }
            catch (Exception e)
            {
                error.Text = e.Message;
            }
        }
        var logIn = new Button { Text = "Log in" };
        logIn.Clicked += async (_, _) => await Run(RealmService.LoginAsync);
        var register = new Button { Text = "Register" };
        register.Clicked += async (_, _) => await Run(RealmService.RegisterAsync);
        Content = new VerticalStackLayout { Padding = 16, Spacing = 8, Children = { email, password, logIn, register, error } };
    }
}
