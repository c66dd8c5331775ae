// Minimal, project-owned declarations of the ArkUI and HarmonyOS pieces the demo page and its
// ability (entry/src/main/ets) use, so check.mjs can type-check them without the HarmonyOS SDK.
// Written from the public ArkUI documentation: only the components, attributes and kits they
// call, with the signatures they rely on. The SDK's real declarations are larger; where they
// differ, DevEco's build is the authority. check.mjs passes the component names to ohos-typescript
// (compilerOptions.ets), which is what lets it parse `struct` and the build() DSL.

// ---- common types ----
declare type Length = string | number;
declare type ResourceColor = string | number;

declare enum FontWeight { Normal, Medium, Bold }
declare enum HorizontalAlign { Start, Center, End }
declare enum VerticalAlign { Top, Center, Bottom }
declare enum FlexAlign { Start, Center, End, SpaceBetween, SpaceAround, SpaceEvenly }
declare enum ProgressType { Linear, Ring, Eclipse, ScaleRing, Capsule }
declare enum Visibility { Visible, Hidden, None }

declare class ClickEvent {
  x: number;
  y: number;
}

/** Attributes every component has (CommonMethod in the SDK). */
declare class CommonMethod<T> {
  width(value: Length): T;
  height(value: Length): T;
  padding(value: Length): T;
  margin(value: Length): T;
  backgroundColor(value: ResourceColor): T;
  borderRadius(value: Length): T;
  layoutWeight(value: number): T;
  enabled(value: boolean): T;
  visibility(value: Visibility): T;
  onClick(event: (event: ClickEvent) => void): T;
}

/** A struct's implicit base (compilerOptions.ets.customComponent). */
declare class CustomComponent extends CommonMethod<CustomComponent> {
  build(): void;
  aboutToAppear?(): void;
  aboutToDisappear?(): void;
}

// ---- decorators ----
declare const Entry: ClassDecorator;
declare const Component: ClassDecorator;
declare const State: PropertyDecorator;
declare const Builder: MethodDecorator;

// ---- containers ----
interface SpaceOptions {
  space?: string | number;
}

interface ColumnInterface {
  (value?: SpaceOptions): ColumnAttribute;
}
declare class ColumnAttribute extends CommonMethod<ColumnAttribute> {
  alignItems(value: HorizontalAlign): ColumnAttribute;
  justifyContent(value: FlexAlign): ColumnAttribute;
}
declare const Column: ColumnInterface;
declare const ColumnInstance: ColumnAttribute;

interface RowInterface {
  (value?: SpaceOptions): RowAttribute;
}
declare class RowAttribute extends CommonMethod<RowAttribute> {
  alignItems(value: VerticalAlign): RowAttribute;
  justifyContent(value: FlexAlign): RowAttribute;
}
declare const Row: RowInterface;
declare const RowInstance: RowAttribute;

interface ScrollInterface {
  (): ScrollAttribute;
}
declare class ScrollAttribute extends CommonMethod<ScrollAttribute> {}
declare const Scroll: ScrollInterface;
declare const ScrollInstance: ScrollAttribute;

interface ListInterface {
  (value?: SpaceOptions): ListAttribute;
}
declare class ListAttribute extends CommonMethod<ListAttribute> {}
declare const List: ListInterface;
declare const ListInstance: ListAttribute;

interface ListItemInterface {
  (): ListItemAttribute;
}
declare class ListItemAttribute extends CommonMethod<ListItemAttribute> {}
declare const ListItem: ListItemInterface;
declare const ListItemInstance: ListItemAttribute;

/** ForEach(items, itemGenerator, keyGenerator): a syntax component (paramsUICallback). */
interface ForEachInterface {
  <T>(arr: Array<T>, itemGenerator: (item: T, index: number) => void,
      keyGenerator?: (item: T, index: number) => string): ForEachAttribute;
}
declare class ForEachAttribute {}
declare const ForEach: ForEachInterface;

// ---- leaves ----
interface TextInterface {
  (content?: string): TextAttribute;
}
declare class TextAttribute extends CommonMethod<TextAttribute> {
  fontSize(value: Length): TextAttribute;
  fontWeight(value: FontWeight): TextAttribute;
  fontColor(value: ResourceColor): TextAttribute;
  maxLines(value: number): TextAttribute;
}
declare const Text: TextInterface;
declare const TextInstance: TextAttribute;

interface ButtonInterface {
  (label: string): ButtonAttribute;
}
declare class ButtonAttribute extends CommonMethod<ButtonAttribute> {
  fontSize(value: Length): ButtonAttribute;
}
declare const Button: ButtonInterface;
declare const ButtonInstance: ButtonAttribute;

interface TextInputOptions {
  placeholder?: string;
  text?: string;
}
interface TextInputInterface {
  (value?: TextInputOptions): TextInputAttribute;
}
declare class TextInputAttribute extends CommonMethod<TextInputAttribute> {
  onChange(callback: (value: string) => void): TextInputAttribute;
}
declare const TextInput: TextInputInterface;
declare const TextInputInstance: TextInputAttribute;

interface ProgressOptions {
  value: number;
  total?: number;
  type?: ProgressType;
}
interface ProgressInterface {
  (options: ProgressOptions): ProgressAttribute;
}
declare class ProgressAttribute extends CommonMethod<ProgressAttribute> {}
declare const Progress: ProgressInterface;
declare const ProgressInstance: ProgressAttribute;

// ---- the ability context (getContext) and the file kit ----
declare module '@kit.AbilityKit' {
  namespace common {
    interface Context {
      /** The app's private files; persistent until the app is uninstalled. */
      readonly filesDir: string;
      /** Caches the system may delete when storage runs low. */
      readonly cacheDir: string;
    }
    interface UIAbilityContext extends Context {}
  }
}

/** The context of the ability a component runs in. */
declare function getContext(component?: Object): import('@kit.AbilityKit').common.Context;

declare module '@kit.CoreFileKit' {
  namespace fileIo {
    interface Stat {
      readonly size: number;
      isFile(): boolean;
    }
    interface File {
      readonly fd: number;
    }
    enum OpenMode { READ_ONLY = 0 }
    function accessSync(path: string): boolean;
    function mkdirSync(path: string): void;
    function listFileSync(path: string): string[];
    function statSync(file: string | number): Stat;
    /** A path or a URI (a picked photo's file://media/... URI). */
    function openSync(path: string, mode?: number): File;
    function readSync(fd: number, buffer: ArrayBuffer): number;
    function closeSync(file: File | number): void;
  }
}

// The system photo picker (no permission needed: the user picks). Shaped after the public
// documentation of photoAccessHelper.PhotoViewPicker (API 10+).
declare module '@kit.MediaLibraryKit' {
  namespace photoAccessHelper {
    enum PhotoViewMIMETypes { IMAGE_TYPE = 'image/*' }
    class PhotoSelectOptions {
      MIMEType?: PhotoViewMIMETypes;
      maxSelectNumber?: number;
    }
    class PhotoSelectResult {
      photoUris: Array<string>;
      isOriginalPhoto: boolean;
    }
    class PhotoViewPicker {
      select(option?: PhotoSelectOptions): Promise<PhotoSelectResult>;
    }
  }
}

// ---- the ability's lifecycle and the platform's signals (entry/src/main/ets/entryability) ----
// Project-written stand-ins for the SDK's declarations (not copied from it), shaped after the
// public API documentation of each module, and only what EntryAbility.ets uses: the SDK's
// modules declare far more. Each is a namespace (or class) behind a default export, as in the
// SDK, so `import window from '@ohos.window'` and `window.WindowEventType.WINDOW_HIDDEN` resolve.

declare module '@ohos.base' {
  export interface BusinessError<T = void> extends Error {
    code: number;
    data?: T;
  }
  export interface Callback<T> {
    (data: T): void;
  }
  export interface AsyncCallback<T, E = void> {
    (err: BusinessError<E>, data: T): void;
  }
}

declare module '@ohos.app.ability.Want' {
  /** What started the ability (only a few of its fields). */
  export default class Want {
    bundleName?: string;
    abilityName?: string;
    uri?: string;
    parameters?: Record<string, Object>;
  }
}

declare module '@ohos.app.ability.AbilityConstant' {
  namespace AbilityConstant {
    /** onCreate's second argument (its fields are not used here, so none are declared). */
    interface LaunchParam {}
    /** onMemoryLevel's argument: how short of memory the system is. */
    enum MemoryLevel {
      MEMORY_LEVEL_MODERATE = 0,
      MEMORY_LEVEL_LOW = 1,
      MEMORY_LEVEL_CRITICAL = 2,
    }
  }
  export default AbilityConstant;
}

declare module '@ohos.window' {
  import { AsyncCallback, Callback } from '@ohos.base';
  namespace window {
    /** A window's visibility and focus changes ('windowEvent'). */
    enum WindowEventType {
      WINDOW_SHOWN = 1,
      WINDOW_ACTIVE = 2,
      WINDOW_INACTIVE = 3,
      WINDOW_HIDDEN = 4,
    }
    interface Window {
      on(type: 'windowEvent', callback: Callback<WindowEventType>): void;
      off(type: 'windowEvent', callback?: Callback<WindowEventType>): void;
    }
    /** The ability's window manager, passed to onWindowStageCreate. */
    interface WindowStage {
      /** Loads a page (a path under ets/, without the extension) into the main window. */
      loadContent(path: string, callback: AsyncCallback<void>): void;
      getMainWindow(): Promise<Window>;
    }
  }
  export default window;
}

declare module '@ohos.app.ability.UIAbility' {
  import AbilityConstant from '@ohos.app.ability.AbilityConstant';
  import Want from '@ohos.app.ability.Want';
  import window from '@ohos.window';
  import { common } from '@kit.AbilityKit';
  /** An ability with a UI; the system calls these on its lifecycle. */
  export default class UIAbility {
    context: common.UIAbilityContext;
    onCreate(want: Want, launchParam: AbilityConstant.LaunchParam): void;
    onDestroy(): void | Promise<void>;
    onWindowStageCreate(windowStage: window.WindowStage): void;
    onWindowStageDestroy(): void;
    onForeground(): void;
    onBackground(): void;
    onMemoryLevel(level: AbilityConstant.MemoryLevel): void;
  }
}

declare module '@ohos.thermal' {
  import { Callback } from '@ohos.base';
  namespace thermal {
    /** The device's thermal level, coolest first. */
    enum ThermalLevel {
      COOL = 0,
      NORMAL = 1,
      WARM = 2,
      HOT = 3,
      OVERHEATED = 4,
      WARNING = 5,
      EMERGENCY = 6,
    }
    function getLevel(): ThermalLevel;
    /** Called on every change of level. */
    function registerThermalLevelCallback(callback: Callback<ThermalLevel>): void;
    function unregisterThermalLevelCallback(callback?: Callback<void>): void;
  }
  export default thermal;
}

declare module '@ohos.hilog' {
  /** The system log. `%{public}s` / `%{public}d` print the argument; plain `%s` / `%d` print
   * `<private>` in release logs. */
  namespace hilog {
    function info(domain: number, tag: string, format: string, ...args: (string | number)[]): void;
    function warn(domain: number, tag: string, format: string, ...args: (string | number)[]): void;
    function error(domain: number, tag: string, format: string, ...args: (string | number)[]): void;
  }
  export default hilog;
}
