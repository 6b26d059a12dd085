/// The tool kinds flowdir provides itself (docs/templates-and-tools.md, "Tools").
public enum BuiltinTools {
    public static let all: [ToolDefinition] = [
        ToolDefinition(
            kind: "ImageLoader",
            summary: "Copy an image into the workflow (from params.path, or ask for one)",
            outputs: [PortSpec(name: "image", type: .image)],
            params: [
                ParamSchema(name: "path", type: .path, summary: true,
                            description: "the image to load; with none, a person is asked through the inbox"),
                ParamSchema(name: "source", type: .string,
                            description: "where a person should pick the image from (a hint)"),
            ],
            interaction: .selectAsset
        ),
        ToolDefinition(
            kind: "UserAssetPicker",
            summary: "Ask a person for a file",
            outputs: [PortSpec(name: "image", type: .image)],
            params: [ParamSchema(name: "source", type: .string)],
            interaction: .selectAsset, flexiblePorts: true
        ),
        ToolDefinition(
            kind: "UserMaskEditor",
            summary: "Ask a person to draw a mask",
            inputs: [PortSpec(name: "image", type: .image)],
            outputs: [PortSpec(name: "mask", type: .mask)],
            interaction: .drawMask, flexiblePorts: true
        ),
        ToolDefinition(
            kind: "ParamConfirm",
            summary: "Ask a person to confirm or edit params",
            interaction: .confirmParams, flexiblePorts: true, acceptsAnyParams: true
        ),
        ToolDefinition(
            kind: "Choice",
            summary: "Ask a person to pick one option",
            outputs: [PortSpec(name: "choice", type: .json)],
            params: [ParamSchema(name: "options", type: .array)],
            interaction: .choice, flexiblePorts: true
        ),
    ]

    public static func named(_ kind: String) -> ToolDefinition? { all.first { $0.kind == kind } }
}
