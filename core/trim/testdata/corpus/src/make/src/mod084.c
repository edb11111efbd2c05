#include <stdio.h>

int mod084(int x)
{
    int unused_84 = 84;
    return x + 84;
}
