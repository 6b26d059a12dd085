/// What the command tests at the edges start from: a folder with a
/// one-question template at `wf/t.yaml`, and an environment that keeps the
/// machine's config and state out (the registry goes to `state/` inside).
public enum CommandFixture {
    public static func onePicker() throws -> (TemporaryDirectory, [String: String]) {
        let dir = try TemporaryDirectory()
        try dir.write("wf/t.yaml", "schema: app.workflow/v2\nname: T\nnodes:\n  - { id: p, kind: UserAssetPicker, outputs: { image: ImageRef } }\n")
        return (dir, ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": "", "XDG_STATE_HOME": dir.path + "/state"])
    }
}
