using MongoDB.Bson;
using Realms;

namespace RealmTodo.Models;

/// <summary>The backend's todo.Item.</summary>
public partial class Item : IRealmObject
{
    [PrimaryKey, MapTo("_id")]
    public ObjectId Id { get; set; } = ObjectId.GenerateNewId();

    [MapTo("isComplete")]
    public bool IsComplete { get; set; }

    [MapTo("summary"), Required]
    public string Summary { get; set; } = "";

    [MapTo("owner_id"), Required]
    public string OwnerId { get; set; } = "";
}
