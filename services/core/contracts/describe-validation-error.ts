import type { ErrorObject } from 'ajv';

/** `/watermark/fontSize` → `watermark.fontSize`; the root name when the path is empty. */
export function fieldName(instancePath: string, root: string): string {
  if (instancePath === '') return root;
  return instancePath
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('')
    .replace(/\.\[/g, '[');
}

/** One ajv error as a sentence that names the field and the rule. */
export function describeValidationError(error: ErrorObject, root: string): string {
  const at = fieldName(error.instancePath, root);
  const params = error.params as Record<string, unknown>;
  const child = (name: unknown): string =>
    error.instancePath === '' ? String(name) : `${at}.${String(name)}`;
  switch (error.keyword) {
    case 'required':
      return `${child(params['missingProperty'])} is required`;
    case 'additionalProperties':
      return `${child(params['additionalProperty'])} is not a known field`;
    case 'unevaluatedProperties':
      return `${child(params['unevaluatedProperty'])} is not a known field`;
    case 'enum':
      return `${at} must be one of ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${at} must be ${JSON.stringify(params['allowedValue'])}`;
    case 'type':
      return `${at} must be of type ${String(params['type'])}`;
    case 'errorMessage': {
      // ajv-errors: a custom message; `required` ones are worded about the missing field.
      const inner = (params['errors'] as ErrorObject[] | undefined)?.[0];
      if (inner?.keyword === 'required')
        return `${child(inner.params['missingProperty'])} ${error.message ?? ''}`;
      // Authored messages at the root are whole sentences naming their fields.
      if (error.instancePath === '') return error.message ?? `${root} is invalid`;
      return `${at} ${error.message ?? 'is invalid'}`;
    }
    default:
      return `${at} ${error.message ?? 'is invalid'}`;
  }
}
