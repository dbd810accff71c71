using Realms;
using RealmTodo.Models;
using RealmTodo.Services;

namespace RealmTodo.Views;

public class ItemsPage : ContentPage
{
    private readonly Realm realm = RealmService.GetRealm();

    public ItemsPage()
    {
        Title = "My to-dos";
        var summary = new Entry { Placeholder = "New to-do" };
        var add = new Button { Text = "Add" };
        add.Clicked += (_, _) =>
        {
            var text = summary.Text?.Trim();
            if (string.IsNullOrEmpty(text)) return;
            realm.Write(() => realm.Add(new Item { Summary = text, OwnerId = RealmService.CurrentUser!.Id }));
            summary.Text = "";
        };
        var list = new CollectionView
        {
            ItemsSource = realm.All<Item>(),
            ItemTemplate = new DataTemplate(() =>
            {
                var done = new CheckBox();
                done.SetBinding(CheckBox.IsCheckedProperty, nameof(Item.IsComplete));
                var label = new Label { VerticalOptions = LayoutOptions.Center };
                label.SetBinding(Label.TextProperty, nameof(Item.Summary));
                var delete = new Button { Text = "Delete" };
                delete.Clicked += (sender, _) =>
                {
                    if ((sender as BindableObject)?.BindingContext is Item item) realm.Write(() => realm.Remove(item));
                };
                return new HorizontalStackLayout { Spacing = 8, Children = { done, label, delete } };
            }),
        };
        ToolbarItems.Add(new ToolbarItem("Log out", null, async () =>
        {
            await RealmService.LogoutAsync();
            await Navigation.PopToRootAsync();
        }));
        Content = new VerticalStackLayout { Padding = 16, Spacing = 8, Children = { summary, add, list } };
    }
}
