#include <stdio.h>

int mod139(int x)
{
    return x + 139;
}
