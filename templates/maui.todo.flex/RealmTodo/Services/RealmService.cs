using System.Reflection;
using System.Text.Json;
using Realms;
using Realms.Sync;
using RealmTodo.Models;

namespace RealmTodo.Services;

/// <summary>The App Services app (from atlasConfig.json) and the user's synced realm.</summary>
public static class RealmService
{
    private record AtlasConfig(string appId, string baseUrl, string dataExplorerLink);

    private static Realms.Sync.App app = null!;

    public static string DataExplorerLink { get; private set; } = "";

    public static User? CurrentUser => app.CurrentUser;

    public static void Init()
    {
        using var stream = Assembly.GetExecutingAssembly().GetManifestResourceStream("RealmTodo.atlasConfig.json")
            ?? throw new InvalidOperationException("atlasConfig.json is not embedded");
        var config = JsonSerializer.Deserialize<AtlasConfig>(stream)
            ?? throw new InvalidOperationException("atlasConfig.json is empty");
        if (string.IsNullOrEmpty(config.appId))
            throw new InvalidOperationException("atlasConfig.json has no appId: put your app id there (see README.md)");
        DataExplorerLink = config.dataExplorerLink;
        app = Realms.Sync.App.Create(new AppConfiguration(config.appId) { BaseUri = new Uri(config.baseUrl) });
    }

    public static async Task RegisterAsync(string email, string password)
    {
        await app.EmailPasswordAuth.RegisterUserAsync(email, password);
        await LoginAsync(email, password);
    }

    public static Task LoginAsync(string email, string password) =>
        app.LogInAsync(Credentials.EmailPassword(email, password));

    public static Realm GetRealm()
    {
        var user = CurrentUser ?? throw new InvalidOperationException("not logged in");
        var config = new FlexibleSyncConfiguration(user)
        {
            PopulateInitialSubscriptions = realm =>
                realm.Subscriptions.Add(realm.All<Item>().Where(i => i.OwnerId == user.Id), new SubscriptionOptions { Name = "my_items" }),
        };
        return Realm.GetInstance(config);
    }

    public static async Task LogoutAsync()
    {
        if (CurrentUser != null) await CurrentUser.LogOutAsync();
    }
}
