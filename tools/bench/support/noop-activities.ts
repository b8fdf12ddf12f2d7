export const noopActivities = {
  async noop(): Promise<void> {},
};
