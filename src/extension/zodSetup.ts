/**
 * Imported first by the extension entry, before any module builds a zod schema: zod probes the
 * `navigator` global to decide whether it may compile parsers with `new Function`, and the
 * extension host traps that global ("PendingMigrationError: navigator is now a global in
 * nodejs"). Interpreted parsing is fast enough for settings and IPC messages.
 */
import { config } from 'zod'

config({ jitless: true })
