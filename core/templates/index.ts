// The template engine's public API (see README.md in this folder).
export { TEMPLATES, findTemplate, compatibleTemplates, type TemplateInfo, type TemplateClient, type TemplateBackend, type MetadataKind } from './catalogue';
export { localMetadataValues, renderMetadata, METADATA_KEYS, type MetadataValues } from './metadata';
export {
  TemplateError, validateAppName, newClientAppId, requireTemplate, backendFiles, clientFiles, createAppFiles, metadataFilePath,
  writeFileMap, TEMPLATE_DATA_SOURCE, BLANK_APP_DATA_SOURCE, DEFAULT_CLUSTER_NAME, MAX_APP_NAME_LENGTH,
  type FileMap, type TemplateSource, type NewAppOptions, type ClientForm, type CreatedApp, type FileWriter,
} from './newApp';
export {
  templatePicks, downloadPicks, targetFolderProblem, createFromTemplate, downloadClient, DEFAULT_LOCAL_BASE_URL,
  type TemplatePick, type CreateFromTemplateRequest, type CreatedFromTemplate, type DownloadRequest,
} from './workflow';
