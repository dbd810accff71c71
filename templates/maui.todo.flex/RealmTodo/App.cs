using RealmTodo.Services;
using RealmTodo.Views;

namespace RealmTodo;

public class App : Application
{
    public App()
    {
        RealmService.Init();
        MainPage = new NavigationPage(RealmService.CurrentUser == null ? new LoginPage() : new ItemsPage());
    }
}
